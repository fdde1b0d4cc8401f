// Cookies and session cookies without their flags.
const express = require("express");
const session = require("express-session");
const cookieSession = require("cookie-session");

const app = express();
app.use(session({ secret: process.env.SECRET, cookie: { secure: false } })); // taint: insecure-cookie
app.use(cookieSession({ name: "s", keys: ["k"], httpOnly: false, secure: true })); // taint: insecure-cookie

app.post("/login", (req, res) => {
  res.cookie("token", "abc"); // taint: insecure-cookie
  res.cookie("sid", "abc", { secure: false, httpOnly: true }); // taint: insecure-cookie
  res.end();
});
