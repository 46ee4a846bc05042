"""A website as a source: a start page or sitemap, crawled politely through a
fetcher that checks every address it connects to."""
