package terraform

import (
	"regexp"
)

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// schemas emits the schema registry and one draft-04 schema per event contract.
func (g *gen) schemas() {
	if len(g.f.Events) == 0 {
		return
	}
	fl := g.file("schemas.tf").owner(PartEvents, "/events")
	g.claim("aws_schemas_registry", "fleet", "/events")
	r := fl.resource("aws_schemas_registry", "fleet")
	r.set("name", str(g.f.SchemaRegistry))
	r.set("description", str("Event contracts of fleet "+g.f.Name+"."))
	for _, e := range g.f.Events {
		n := nonIdent.ReplaceAllString(e.DetailType, "_")
		if n == "" || (n[0] >= '0' && n[0] <= '9') {
			n = "event_" + n
		}
		fl.owner(PartEvent+e.DetailType, e.Path)
		g.claim("aws_schemas_schema", n, e.Path)
		s := fl.resource("aws_schemas_schema", n)
		s.set("name", str(e.SchemaName))
		s.set("registry_name", ref("aws_schemas_registry", "fleet", "name"))
		s.set("type", str("JSONSchemaDraft4"))
		if e.Description != "" {
			s.set("description", str(e.Description))
		}
		s.set("content", call("file", pathModule("../schemas/"+e.DetailType+".json")))
	}
}
