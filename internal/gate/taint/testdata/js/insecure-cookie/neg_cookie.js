// Cookies set with secure and httpOnly.
const express = require("express");
const session = require("express-session");

const app = express();
const secure = process.env.NODE_ENV === "production";
app.use(session({ secret: process.env.SECRET, cookie: { secure: true, httpOnly: true } }));
app.use(session({ secret: process.env.SECRET, cookie: { secure } }));

app.post("/login", (req, res) => {
  res.cookie("token", "abc", { secure: true, httpOnly: true, sameSite: "strict" });
  res.end();
});
