def by_name(cur, name):
    cur.execute("SELECT id FROM users WHERE name = %s", (name,))


def paged(cur, limit):
    q = "SELECT id FROM users"
    q += " LIMIT %(limit)s"
    cur.execute(q, {"limit": limit})


def constant(cur):
    cur.execute("SELECT %s FROM t" % "id")


def message(log, name):
    # Formatting text that is not SQL, or SQL that is never executed.
    log.info("selected %s from the menu" % name)
    label = "SELECT a FROM t WHERE x = %s" % name
    return label


def other_var(cur, name):
    text = "DELETE FROM t WHERE a = '%s'" % name
    cur.execute("SELECT 1")
    return text
