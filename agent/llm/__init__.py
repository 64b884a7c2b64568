"""The OpenAI-compatible model client and its world: the client, its errors, where requests go
(provider, discovery, windows and their table, prices), retries and the usage a server
reports. The loop and compaction import only the errors, windows and usage from here (an
import contract holds that): never the client.
"""
