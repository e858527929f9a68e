"""The platforms' edges: each module turns its platform's events or server into plain calls of the core and back
(AWS Lambda, Cloud Functions / Cloud Run, the local HTTP server, functions-framework's gunicorn, the command line).
"""
