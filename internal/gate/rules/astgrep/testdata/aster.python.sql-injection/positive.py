import sqlite3


def by_name(conn, name):
    cur = conn.cursor()
    # ruleid: aster.python.sql-injection
    cur.execute("SELECT id FROM users WHERE name = '%s'" % name)
    return cur.fetchone()


def by_id(cur, user_id):
    # ruleid: aster.python.sql-injection
    cur.execute(f"SELECT * FROM users WHERE id = {user_id}")


def delete(cur, table, key):
    # ruleid: aster.python.sql-injection
    cur.execute("DELETE FROM {} WHERE k = {}".format(table, key))


def concat(cur, name):
    # ruleid: aster.python.sql-injection
    cur.execute("SELECT * FROM users WHERE name = '" + name + "'")


async def create(conn, name):
    # ruleid: aster.python.sql-injection
    q = ("INSERT INTO students (name) "
         "VALUES ('%(name)s')" % {'name': name})
    async with conn.cursor() as cur:
        await cur.execute(q)


def update(db, value, ident):
    # ruleid: aster.python.sql-injection
    sql = f"UPDATE accounts SET note = '{value}' WHERE id = {ident}"
    db.executemany(sql, [])


def extend(cur, where):
    q = "SELECT a FROM t"
    # ruleid: aster.python.sql-injection
    q += " WHERE " + where
    cur.execute(q)
