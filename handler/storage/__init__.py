"""Files in object stores: the S3 / Cloud Storage clients, their events, retries within an invocation, the
translation of one uploaded file, and the fan-out of large files into parts (``bulk``).
"""
