"""A data-access module: its callers live elsewhere."""


def delete_user(cur, name):
    cur.execute("DELETE FROM users WHERE name = '%s'" % name)  # taint: sql-injection


def rename(cur, old, new):
    query = "UPDATE users SET name = '{}' WHERE name = '{}'".format(new, old)
    cur.execute(query)  # taint: sql-injection
