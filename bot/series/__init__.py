"""Series: list messages grouped into threads, postings (series versions) and series.

`grouping` decides, as a pure function, which messages of a thread form which posting;
`assemble` keeps the database's series, versions, patches and trailers in step with it;
`trailers` attributes review trailers to patches; `mbox` makes am-ready mboxes with b4;
`views` turns stored series into the stable JSON shapes the CLI and other tools read.
"""
