"""The HTTP surfaces, free of any web framework: the request/response types (``messages``), the router and its
routes, the web page, the OpenAPI description, the access log, API keys and the drop-in APIs (``compat``).
"""
