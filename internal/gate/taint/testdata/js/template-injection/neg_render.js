// Fixed templates given input as data.
const express = require("express");
const ejs = require("ejs");
const Handlebars = require("handlebars");

const app = express();
const card = Handlebars.compile("<p>{{name}}</p>");

app.get("/greet", (req, res) => {
  res.send(ejs.render("<p><%= name %></p>", { name: req.query.name }));
});

app.get("/card", (req, res) => {
  res.send(card({ name: req.query.name }));
});
