#pragma once
// `backyard-mcp batch --in RUNS.jsonl --out RESULTS.jsonl --parallel N [settings]`: isolated
// Python runs from a file (see batch.cpp). argv[0] is "batch".

namespace byd {

int runBatch(int argc, char** argv);

}  // namespace byd
