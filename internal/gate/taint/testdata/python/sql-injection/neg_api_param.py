"""Helpers whose every caller is here, with fixed values, and a helper that
runs the statement it is given (its caller decides what that is)."""


def by_kind(cur, kind):
    cur.execute("SELECT id FROM users WHERE kind = '" + kind + "'")
    return cur.fetchall()


def admins(cur):
    return by_kind(cur, "admin")


def run(cur, sql, params=()):
    cur.execute(sql, params)
    return cur.fetchall()
