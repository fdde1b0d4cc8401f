import sys

TABLE = "events"


def count(cur):
    cur.execute("SELECT count(*) FROM " + TABLE)
    return cur.fetchone()[0]


def main(cur):
    days = int(sys.argv[1])
    cur.execute("DELETE FROM events WHERE age > %s" % days)
