// Express handlers that build SQL from request data.
const express = require("express");
const mysql = require("mysql2");
const { Pool } = require("pg");

const app = express();
const connection = mysql.createConnection({ host: "localhost", user: "app" });
const pool = new Pool();

app.get("/users", (req, res) => {
  const name = req.query.name;
  const sql = "SELECT * FROM users WHERE name = '" + name + "'";
  connection.query(sql, (err, rows) => res.json(rows)); // taint: sql-injection
});

app.get("/orders/:id", async (req, res) => {
  const { id } = req.params;
  const result = await pool.query(`SELECT * FROM orders WHERE id = ${id}`); // taint: sql-injection
  res.json(result.rows);
});

function byColumn(column, value) {
  return "SELECT id FROM items WHERE " + column + " = '" + value.trim() + "'";
}

app.post("/search", (req, res) => {
  const q = byColumn("title", req.body.title);
  connection.execute(q, [], (err, rows) => res.json(rows)); // taint: sql-injection
});

module.exports = app;
