"""The audit API's routes, one router per resource (runs, decisions, pods, nodes, health),
and its error answers (``errors``); ``http_api.create_app`` puts them together."""
