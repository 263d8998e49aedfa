//! ci/record-agents.yml installs and checks every recipe: each recipe in recorder/recipes/ has a
//! matrix entry naming it and the exact npm package@version it records.

use std::path::Path;

use acp_recorder::recipe::Recipe;

#[test]
fn the_weekly_workflow_lists_every_recipe_with_its_npm_spec() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workflow = std::fs::read_to_string(root.join("../ci/record-agents.yml")).unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(root.join("recipes")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let recipe = Recipe::load(&path).unwrap();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let spec = recipe.spec();
        let entry = format!("- recipe: {stem}\n");
        let at = workflow
            .find(&entry)
            .unwrap_or_else(|| panic!("ci/record-agents.yml has no matrix entry `recipe: {stem}`"));
        let npm_line = workflow[at + entry.len()..].lines().next().unwrap_or("");
        assert!(
            npm_line.trim() == format!("npm: {spec}")
                || npm_line.trim() == format!("npm: \"{spec}\""),
            "ci/record-agents.yml: the entry for {stem} installs `{}`, the recipe records {spec}",
            npm_line.trim()
        );
        seen += 1;
    }
    assert!(seen >= 8, "only {seen} recipes found");
}
