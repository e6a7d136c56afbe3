"""Order groups for the trace checks (tools/check-perfetto-ui.py --expect-slice, tools/export_validate.py's
chrome-trace order): names in a list must start in that order, except that names written together as `a|b` start
together, in either order (the long-press callback and its stall: the watchdog pings as the main thread wakes)."""


def groups_of(items):
    """The groups of a list of items, each `a` or `a|b`: [["a"], ["a", "b"]]."""
    return [item.split("|") for item in items]


def in_group_order(seen, groups):
    """True when `seen` (names in the order they start) holds the groups' names exactly, group after group, each
    group's names in any order."""
    at, ok = 0, len(seen) == sum(len(group) for group in groups)
    for group in groups:
        ok = ok and sorted(seen[at:at + len(group)]) == sorted(group)
        at += len(group)
    return ok
