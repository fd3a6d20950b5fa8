"""Pure analysis, by subject: the arithmetic over records and traces (a sweep's regimes and
plateau, rates against the roofline, decode floors and step anatomy, a fleet, a device
run, `pack`'s plan) and the result models it returns; the sentences about them are in
`explain/`. Takes records (`parse/`) and views of API objects (`k8s/`), returns typed
results."""
