// Input evaluated as code.
const express = require("express");
const vm = require("vm");
const math = require("mathjs");

const app = express();

app.post("/calc", (req, res) => {
  const total = eval(req.body.expression); // taint: code-injection
  res.json({ total });
});

app.post("/rule", (req, res) => {
  const fn = new Function("x", "return " + req.body.rule); // taint: code-injection
  res.json({ ok: fn(1) });
});

app.post("/sandbox", (req, res) => {
  const result = vm.runInNewContext(req.body.code, {}); // taint: code-injection
  res.json({ result });
});

app.get("/later", (req, res) => {
  setTimeout("report('" + req.query.id + "')", 100); // taint: code-injection
  res.end();
});

app.get("/math", (req, res) => {
  res.json({ v: math.evaluate(req.query.expr) }); // taint: code-injection
});

app.get("/plugin", (req, res) => {
  const plugin = require("./plugins/" + req.query.name); // taint: code-injection
  res.json(plugin);
});
