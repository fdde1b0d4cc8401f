function routes(app) {
    app.get("/", (req, res) => res.redirect("/login"));
    app.get("/item", (req, res) => res.redirect("/items/" + req.query.id));
    app.get("/home", (req, res) => res.redirect(req.user.isAdmin ? "/benefits" : "/dashboard"));
}
