// The same shell sink behind each web framework's request.
const { exec } = require("child_process");
const fastify = require("fastify")();
const Hapi = require("@hapi/hapi");
const Koa = require("koa");
const WebSocket = require("ws");

fastify.get("/f", async (request, reply) => {
  exec("host " + request.query.name); // taint: command-injection
  return "ok";
});

const server = Hapi.server({ port: 3000 });
server.route({
  method: "POST",
  path: "/h",
  handler: (request, h) => {
    exec("host " + request.payload.name); // taint: command-injection
    return h.response("ok").type("text/plain");
  },
});

const koa = new Koa();
koa.use(async (ctx) => {
  exec(`host ${ctx.request.body.name}`); // taint: command-injection
  ctx.body = "ok";
});

const wss = new WebSocket.Server({ port: 8081 });
wss.on("connection", (ws) => {
  ws.on("message", (data) => {
    exec("notify " + data.toString()); // taint: command-injection
  });
});
