from fastapi import FastAPI
from sqlalchemy import create_engine, text

app = FastAPI()
engine = create_engine("sqlite://")


@app.get("/orders")
def orders(status: str):
    clause = "status = '" + status + "'"
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id FROM orders WHERE " + clause))  # taint: sql-injection
        return [r[0] for r in rows]
