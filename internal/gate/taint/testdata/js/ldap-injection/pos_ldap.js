// An LDAP filter built from a login form.
const express = require("express");
const ldap = require("ldapjs");

const app = express();
const client = ldap.createClient({ url: "ldap://127.0.0.1:389" });

app.post("/login", (req, res) => {
  const filter = "(&(uid=" + req.body.user + ")(objectClass=person))";
  client.search("ou=people,dc=example,dc=com", { filter, scope: "sub" }, (err, r) => res.end()); // taint: ldap-injection
});
