"""Front doors over the network: the REST API (``create_app``) and the MCP server
(``create_mcp``, ``run_stdio``). Both are thin: every call goes into :class:`reverie.Memory`.

Needs the ``server`` extra: ``pip install 'reverie[server]'``.
"""

from reverie.server.mcp_server import create_mcp, run_stdio
from reverie.server.rest import create_app

__all__ = ["create_app", "create_mcp", "run_stdio"]
