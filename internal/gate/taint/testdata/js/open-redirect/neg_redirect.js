// Redirects whose host is fixed or checked.
const express = require("express");

const app = express();
const ALLOWED = ["https://docs.example.com", "https://example.com"];

app.get("/profile", (req, res) => {
  res.redirect("/users/" + encodeURIComponent(req.query.id));
});

app.get("/docs", (req, res) => {
  res.redirect("https://docs.example.com/search?q=" + req.query.q);
});

app.get("/go", (req, res) => {
  const target = req.query.to;
  if (ALLOWED.includes(target)) {
    res.redirect(target);
  } else {
    res.redirect("/");
  }
});

app.get("/local", (req, res) => {
  const url = req.query.url;
  if (url.startsWith("/") && !url.startsWith("//")) {
    return res.redirect(url);
  }
  res.redirect("/");
});
