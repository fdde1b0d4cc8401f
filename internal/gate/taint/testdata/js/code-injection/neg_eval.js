// Data parsed as data; code that is constant.
const express = require("express");
const vm = require("vm");

const app = express();

app.post("/calc", (req, res) => {
  const data = JSON.parse(req.body.json);
  const n = parseFloat(req.query.n);
  res.json({ data, v: eval("1 + " + n) });
});

app.post("/sandbox", (req, res) => {
  const result = vm.runInNewContext("a + b", { a: req.body.a, b: req.body.b });
  res.json({ result });
});

app.get("/later", (req, res) => {
  const id = req.query.id;
  setTimeout(() => console.log(id), 100);
  res.end();
});
