// Redirects allowed only to paths of this site.
const express = require("express");

const app = express();

function isLocal(url) {
  return !/^(\w+:)?[/\\]{2}/.test(url);
}

app.get("/back", (req, res) => {
  const to = req.query.to;
  if (isLocal(to)) {
    res.redirect(to);
  } else {
    res.redirect("/");
  }
});
