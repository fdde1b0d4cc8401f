import sqlite3

from flask import Flask, request

app = Flask(__name__)


@app.route("/users")
def users():
    q = request.args.get("q", "")
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute("SELECT * FROM users WHERE name = ?", (q,))
    limit = int(request.args.get("limit", "10"))
    cur.execute("SELECT * FROM users LIMIT %d" % limit)
    order = request.args.get("order", "name")
    if order not in ("name", "created"):
        return {"error": "bad order"}, 400
    cur.execute("SELECT * FROM users ORDER BY " + order)
    return {"rows": cur.fetchall()}
