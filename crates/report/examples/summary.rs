//! Prints the summary of a stored group and writes the report with the summary on top,
//! to look at it: `cargo run -p report --example summary -- DB GROUP OUT.html`.

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, group, out] = &args[..] else {
        eprintln!("usage: summary DB GROUP OUT.html");
        std::process::exit(2);
    };
    let store = results::Store::open_read_only(Path::new(db)).expect("open the database");
    let id = results::GroupId(group.parse().expect("a group id"));
    let data = report::gather::group(&store, id, &Default::default()).expect("read the group");
    print!("{}", report::summary::text(&data));
    // The report as it is, with the summary put first in its body.
    let page = report::html::render(&data);
    let summary = report::summary::html(&data);
    let page = match page.find("<main>") {
        Some(i) => format!("{}<main>\n{summary}{}", &page[..i], &page[i + 6..]),
        None => page.replacen("</header>", &format!("</header>\n{summary}"), 1),
    };
    std::fs::write(out, page).expect("write the page");
}
