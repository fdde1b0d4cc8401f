// A Next.js route handler and a server action.
import { execSync } from "child_process";

export async function POST(request: Request) {
  const body = await request.json();
  execSync("host " + body.name); // taint: command-injection
  return Response.json({ ok: true });
}
