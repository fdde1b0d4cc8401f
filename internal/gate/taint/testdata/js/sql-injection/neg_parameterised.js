// The same queries done safely: parameters, numbers, an allow-list.
const express = require("express");
const mysql = require("mysql2");

const app = express();
const connection = mysql.createConnection({ host: "localhost" });
const SORTABLE = ["name", "created"];

app.get("/users", (req, res) => {
  connection.query("SELECT * FROM users WHERE name = ?", [req.query.name], (err, rows) => res.json(rows));
});

app.get("/page", (req, res) => {
  const limit = parseInt(req.query.limit, 10);
  connection.query("SELECT * FROM users LIMIT " + limit, (err, rows) => res.json(rows));
});

app.get("/sorted", (req, res) => {
  const order = req.query.order;
  if (!SORTABLE.includes(order)) {
    return res.status(400).send("bad order");
  }
  connection.query("SELECT * FROM users ORDER BY " + order, (err, rows) => res.json(rows));
});

app.get("/escaped", (req, res) => {
  const name = mysql.escape(req.query.name);
  connection.query("SELECT * FROM users WHERE name = " + name, (err, rows) => res.json(rows));
});

app.get("/cache", (req, res) => {
  const cache = new Map();
  res.json(cache.get(req.query.key));
});

module.exports = app;
