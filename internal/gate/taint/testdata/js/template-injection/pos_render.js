// Templates compiled from input.
const express = require("express");
const ejs = require("ejs");
const pug = require("pug");
const Handlebars = require("handlebars");
const nunjucks = require("nunjucks");

const app = express();

app.post("/preview", (req, res) => {
  res.send(ejs.render(req.body.template, { user: "x" })); // taint: template-injection
});

app.get("/card", (req, res) => {
  const fn = pug.compile("p " + req.query.text); // taint: template-injection
  res.send(fn({}));
});

app.post("/mail", (req, res) => {
  const tpl = Handlebars.compile(req.body.mail); // taint: template-injection
  res.send(tpl({ name: "x" }));
});

app.post("/page", (req, res) => {
  res.send(nunjucks.renderString(req.body.page, {})); // taint: template-injection
});
