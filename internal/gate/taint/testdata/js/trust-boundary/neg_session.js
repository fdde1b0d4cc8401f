// The session holds what the server decided.
const express = require("express");
const users = require("./users");

const app = express();
const THEMES = ["light", "dark"];

app.post("/login", async (req, res) => {
  const user = await users.check(req.body.name, req.body.password);
  req.session.userId = user.id;
  res.redirect("/");
});

app.post("/theme", (req, res) => {
  const theme = req.body.theme;
  if (THEMES.includes(theme)) {
    req.session.theme = theme;
  }
  res.redirect("/");
});
