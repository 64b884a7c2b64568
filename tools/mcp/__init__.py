"""The MCP client: servers named in the config (``[mcp_servers.NAME]``), started in the
background at the session's start, their tools offered to the model as
``mcp__<server>__<tool>`` (README: MCP servers).

- :mod:`tools.mcp.spec`: what the config says about one server, as plain values;
- :mod:`tools.mcp.server`: one server's connection, its state and its calls;
- :mod:`tools.mcp.result`: a call's result as the text the model reads;
- :mod:`tools.mcp.tool`: one server tool as a :class:`~tools.base.Tool` (approval, checks);
- :mod:`tools.mcp.deferral`: the listing and the schema tool used when the schemas are many;
- :mod:`tools.mcp.hub`: all the servers of a session.

MCP servers are not inside the bash sandbox: they run as the user, with what the config
gives them.
"""
