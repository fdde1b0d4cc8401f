// Request data rendered by EJS templates that print it unescaped.
const express = require("express");

const app = express();
app.set("view engine", "ejs");

app.get("/profile", (req, res) => {
  res.locals.motto = req.query.motto;
  res.render("xss_profile", { name: req.query.name, title: "Profile" });
});

app.get("/list", (req, res) => {
  const items = req.query.items.split(",");
  res.render("xss_list", { items });
});
