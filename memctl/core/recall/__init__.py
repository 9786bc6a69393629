"""Reading a query and ranking memories for it: parsing, times, evidence, fusion, ranking, speakers, stores merged, blocks fitted to a budget."""
