function IndexHandler(app) {
    app.get("/learn", (req, res) => {
        // ruleid: aster.js.open-redirect
        return res.redirect(req.query.url);
    });

    app.post("/login", (req, res) => {
        const next = req.body.returnTo;
        // ruleid: aster.js.open-redirect
        res.redirect(302, next);
    });
}

async function koa(ctx) {
    // ruleid: aster.js.open-redirect
    ctx.redirect(ctx.query.back);
}
