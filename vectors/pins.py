"""The pins of this release (Appendix E): written by `python -m dyadic24.vectors.release --write` from
the files; edit the spec or the vectors, regenerate, then rewrite this module."""

PACKAGE = "1.1.0"
SPEC_FILE = "dyadic24-floor-first-v1.md"
SPEC_SHA256 = "cf9ccc27bfbf72e34cfa9946496cc2295355c95e7e520b3bdb9cb9038162e653"
VECTORS_SHA256 = "b7bd4618c9749b9acbaace81bf0763283e7384ea90c41032d9ce343516f5d454"
FILES = {
    "accumulated.json": "2ec2a7edb68be1b6ebeed323d624629f5145b365d3726b605a119e5836ea3561",
    "golden_allocation.json": "463493a5ac87ff842f579cbc70be617843605154db437cbed2911efbbcc1e9c4",
    "golden_arithmetic.json": "27747ebb9ea589400752c07dc3e8f0e1db107143a04d6dcf4df05026086c11ec",
    "golden_batch.json": "7d2de197a6dcdad9ebb5b16c6a5ac0bf2ba917a66c0b3b5e14c5d593333ff441",
    "golden_draw.json": "7d55fa9e62242ff4faacf5abe58ca137713bd6fad700d3f4656956113120b6ac",
    "golden_exp_midpoints.json": "c087151d267841686d8be40978b1c02f1c2c77762c2b7c00fe41c0c7a05d2085",
    "golden_large_vocab.json.gz": "3cfa98d46e89c8093099359b964682e78ce41cf5f72f060a828af74e3ddca148",
    "golden_order.json": "4be91b340cce360572792f8b420a7cbf2393ebc100110076e998f44113676dd3",
    "golden_status.json": "154d8081aa6656a0021391c7727855444eb3ee3b47a55df2e285ded4907c31e1",
    "golden_tree.json": "d33867ceaff75705fe9633fb3a4ff17c82cb6e011b62b079846fcce0eb40362d",
    "golden_widening.json": "7167069740213c70d0f83ee2e833eaf7557c6c4b5a6d5d702785dda4719f3917",
}
