"""Plans: a variant placed on nodes. `model` is the JSON contract written to plan.json."""
