// Output escaped, sent as JSON or plain text, or printed by escaping tags.
const express = require("express");
const escapeHtml = require("escape-html");
const DOMPurify = require("isomorphic-dompurify");

const app = express();

app.get("/hello", (req, res) => {
  res.send("<h1>Hello " + escapeHtml(req.query.name) + "</h1>");
});

app.get("/api", (req, res) => {
  res.json({ name: req.query.name });
});

app.get("/text", (req, res) => {
  res.type("text/plain").send(req.query.name);
});

app.get("/clean", (req, res) => {
  res.send(DOMPurify.sanitize(req.body.html));
});

app.get("/body", (req, res) => {
  res.send(req.body);
});

app.get("/safe-views", (req, res) => {
  res.render("xss_safe", { name: req.query.name });
});

app.get("/safe-hbs", (req, res) => {
  res.render("xss_safe_hbs", { name: req.query.name });
});
