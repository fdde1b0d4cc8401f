const dbPassword = process.env.DB_PASSWORD;
const passwordField = "password123456";

module.exports = {
    db: { user: "app", password: "" },
    cookieSecret: "session-secret",
    apiKey: "YOUR_API_KEY_HERE",
};

function form(user) {
    return { username: user.name, password: user.password };
}
