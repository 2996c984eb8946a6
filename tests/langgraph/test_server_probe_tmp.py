import httpx, time
def test_probe(langgraph_server):
    c = httpx.Client(base_url=langgraph_server.url)
    t = c.post("/threads", json={}).json()["thread_id"]
    r = c.post(f"/threads/{t}/runs/wait", json={"assistant_id": "twice", "input": {}}).json()
    iid = r["__interrupt__"][0]["id"]
    r = c.post(f"/threads/{t}/runs/wait", json={"assistant_id": "twice", "command": {"resume": {iid: "prod"}}, "multitask_strategy": "reject"})
    print("map", r.status_code, r.json())
    r = c.post(f"/threads/{t}/runs/wait", json={"assistant_id": "twice", "command": {"resume": {iid: "stale"}}, "multitask_strategy": "reject"})
    print("stale", r.status_code, r.text[:600])
    print(c.get(f"/threads/{t}").json()["status"], c.get(f"/threads/{t}").json()["interrupts"])
    r = c.post(f"/threads/{t}/runs", json={"assistant_id": "twice", "command": {"resume": {"nonexistent": "x"}}, "multitask_strategy": "reject"})
    print("post stale", r.status_code, r.text[:300])
    r2 = c.post(f"/threads/{t}/runs", json={"assistant_id": "twice", "command": {"resume": {"nonexistent": "x"}}, "multitask_strategy": "reject"})
    print("busy", r2.status_code, r2.text[:300])
    time.sleep(1)
    print(c.get(f"/threads/{t}/runs/{r.json()['run_id']}").json()["status"])
    print(c.get(f"/threads/{t}").json()["status"], c.get(f"/threads/{t}").json()["interrupts"])
    r = c.post(f"/threads/{t}/runs", json={"assistant_id": "nope", "command": {"resume": 1}})
    print("bad assistant", r.status_code, r.text[:300])
    r = c.post(f"/threads/search", json={"status": "bogus"})
    print("bad search", r.status_code, r.text[:300])
