// MongoDB queries whose fields come straight from a JSON body.
const express = require("express");
const User = require("./user-model");

const app = express();
app.use(express.json());

app.post("/login", async (req, res) => {
  const { username, password } = req.body;
  const user = await User.findOne({ username: username, password: password }); // taint: nosql-injection
  res.json({ ok: !!user });
});

app.get("/stock", (req, res) => {
  const db = req.app.locals.db;
  const min = req.query.min;
  db.collection("stocks").find({
    $where: "this.price > " + min, // taint: nosql-injection
  }).toArray((err, docs) => res.json(docs));
});

app.post("/filter", (req, res) => {
  req.app.locals.db.collection("items").find(req.body.filter).toArray((e, d) => res.json(d)); // taint: nosql-injection
});
