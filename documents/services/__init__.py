"""Write paths: verb-first functions that own their transactions.

Admin actions, the REST API, MCP tools, commands and tasks all call these.
"""
