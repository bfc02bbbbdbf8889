//! For the tests that check docs/repeater-design.md quotes the code in
//! the tree ("Adding a sink", "Adding a source"): the code blocks of a
//! section. Test code only.

/// The code blocks of a section of a Markdown file, each dedented by the
/// indentation of its opening fence.
pub fn rust_blocks(doc: &str, section: &str) -> Vec<String> {
    let start = doc.find(section).expect("the section is in the doc");
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for line in doc[start..].lines().skip(1) {
        if open.is_none() && line.starts_with('#') {
            break;
        }
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed == "```rust" => {
                open = Some((line.len() - trimmed.len(), String::new()))
            }
            None => {}
            Some((_, block)) if trimmed == "```" => {
                blocks.push(std::mem::take(block));
                open = None;
            }
            Some((indent, block)) => {
                block.push_str(line.get(*indent..).unwrap_or(""));
                block.push('\n');
            }
        }
    }
    blocks
}
