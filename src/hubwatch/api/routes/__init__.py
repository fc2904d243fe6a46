"""The API's routers, one module per concept."""
