"""Gangs: where a gang stands (`state`), and how a whole gang is placed (`planner`) on the free room
(`room`, `placement`), in index order or gathered in one network domain (`index_order`, `topology`);
the gangs the extender leaves alone (`left_alone`). Imports only `core`.
"""
