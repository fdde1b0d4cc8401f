from pathlib import Path

from fastapi import FastAPI

app = FastAPI()


@app.get("/notes/{name}")
async def note(name: str):
    return {"text": Path("/srv/notes", name).read_text()}  # taint: path-traversal
