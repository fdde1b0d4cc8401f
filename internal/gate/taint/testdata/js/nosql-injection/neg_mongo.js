// Values cast to strings or sanitized before they reach a query.
const express = require("express");
const sanitize = require("mongo-sanitize");
const User = require("./user-model");

const app = express();

app.post("/login", async (req, res) => {
  const user = await User.findOne({ username: String(req.body.username), password: `${req.body.password}` });
  res.json({ ok: !!user });
});

app.post("/login2", async (req, res) => {
  const clean = sanitize(req.body.username);
  const user = await User.findOne({ username: clean });
  res.json({ ok: !!user });
});

app.post("/login3", async (req, res) => {
  const name = req.body.username;
  if (typeof name !== "string") {
    return res.status(400).end();
  }
  const user = await User.findOne({ username: name });
  res.json({ ok: !!user });
});

app.get("/list", (req, res) => {
  const items = [1, 2, 3];
  res.json(items.find((x) => x === Number(req.query.n)));
});
