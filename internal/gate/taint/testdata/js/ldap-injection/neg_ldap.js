// The same filter with its value escaped.
const express = require("express");
const ldap = require("ldapjs");
const { filter: escapeFilter } = require("ldap-escape");

const app = express();
const client = ldap.createClient({ url: "ldap://127.0.0.1:389" });

app.post("/login", (req, res) => {
  const filter = "(&(uid=" + escapeFilter`${req.body.user}` + ")(objectClass=person))";
  client.search("ou=people,dc=example,dc=com", { filter: "(objectClass=person)", scope: "sub" }, (err, r) => res.end());
  res.json({ filter });
});
