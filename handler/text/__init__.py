"""Text in and out of the model: segmentation, protected spans (numbers, markup, glossary terms), cleaning,
Chinese script conversion and input validation. Plain Python; never imports the model, the API or storage.
"""
