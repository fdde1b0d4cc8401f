// Request data rendered by Handlebars templates with triple-stash output.
const express = require("express");
const Handlebars = require("handlebars");

const app = express();
app.set("view engine", "hbs");

app.get("/bio", (req, res) => {
  res.render("xss_bio", { bio: req.body.bio, posts: [{ title: req.query.t }] });
});

Handlebars.registerHelper("bold", (text) => new Handlebars.SafeString("<b>" + text + "</b>"));

app.get("/bold", (req, res) => {
  const s = new Handlebars.SafeString("<b>" + req.query.word + "</b>"); // taint: xss
  res.render("xss_plain", { s });
});
