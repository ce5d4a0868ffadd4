//! Expanding a plan into its cells: every combination of the axes, outermost first,
//! without the excluded ones, each checked as a command line by the caller (the CLI's
//! own parser, then the probe's checks).

use super::spanned::Ctx;
use super::{Cell, CellCommand, CellRefusal, Plan, PlanError, Setting};

impl Plan {
    /// Every cell, in plan order (outermost axis first, repeats innermost), each checked
    /// by `check` (parsing it as a command line, then the probe's own checks, with no
    /// side effects), with what `check` made of it. The first cell refused is the error,
    /// at the value whose flag its message names.
    pub fn cells<T>(
        &self,
        check: &dyn Fn(&CellCommand) -> Result<T, CellRefusal>,
    ) -> Result<Vec<(Cell, T)>, PlanError> {
        let ctx = Ctx {
            file: &self.source,
            text: &self.text,
        };
        let mut cells = Vec::new();
        let mut index = vec![0usize; self.axes.len()];
        let total: usize = self.axes.iter().map(|a| a.values.len()).product();
        for _ in 0..total {
            let excluded = self.excludes.iter().find(|x| {
                x.matches
                    .iter()
                    .all(|(axis, values)| values.contains(&index[*axis]))
            });
            if let Some(x) = excluded {
                x.used.set(true);
            } else {
                for repeat in 1..=self.repeats {
                    cells.push(self.cell(&ctx, &index, repeat, check)?);
                }
            }
            // The innermost (last) axis turns fastest.
            for i in (0..index.len()).rev() {
                index[i] += 1;
                if index[i] < self.axes[i].values.len() {
                    break;
                }
                index[i] = 0;
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some((dup, _)) = cells.iter().find(|(c, _)| !seen.insert(c.key.as_str())) {
            return Err(ctx.err(
                dup.at,
                format!("two cells have the key `{}`", dup.key),
                "give the axis values labels without spaces or `=`, so each cell's key is its own",
            ));
        }
        if let Some(x) = self.excludes.iter().find(|x| !x.used.get()) {
            return Err(ctx.err(
                x.at,
                "this exclusion matches no cell",
                "check its labels against the axes, or remove it",
            ));
        }
        if cells.is_empty() {
            return Err(ctx.err(
                0,
                "the plan has no cells: every combination is excluded",
                "remove an [[exclude]] or add axis values",
            ));
        }
        Ok(cells)
    }

    fn cell<T>(
        &self,
        ctx: &Ctx<'_>,
        index: &[usize],
        repeat: u32,
        check: &dyn Fn(&CellCommand) -> Result<T, CellRefusal>,
    ) -> Result<(Cell, T), PlanError> {
        let mut command = CellCommand::new(&self.probe);
        let mut axes = Vec::new();
        let mut profile = "current".to_string();
        let mut ats: Vec<(usize, Vec<String>)> = self
            .set
            .iter()
            .map(|s| (s.at, vec![s.flag.clone()]))
            .collect();
        let push = |command: &mut CellCommand, s: &Setting| {
            command.flag(&s.flag, s.value.as_deref());
        };
        for s in &self.set {
            push(&mut command, s);
        }
        let mut first_at = None;
        for (axis, &i) in self.axes.iter().zip(index) {
            let v = &axis.values[i];
            first_at.get_or_insert(v.at);
            axes.push((axis.name.clone(), v.label.clone()));
            for s in &v.settings {
                push(&mut command, s);
            }
            if let Some(p) = &v.profile {
                profile = p.clone();
            }
            ats.push((v.at, v.settings.iter().map(|s| s.flag.clone()).collect()));
        }
        axes.push(("repeat".into(), repeat.to_string()));
        let key = axes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let at = first_at.unwrap_or(0);
        // Point at the value whose flag the message names, else the cell's first value.
        let locate = |msg: &str| {
            ats.iter()
                .rev()
                .find(|(_, flags)| flags.iter().any(|f| msg.contains(&format!("--{f}"))))
                .map_or(at, |(a, _)| *a)
        };
        let checked = check(&command).map_err(|refusal| match refusal {
            CellRefusal::NotACommandLine(msg) => ctx.err(
                locate(&msg),
                format!("cell {key}: {msg}"),
                format!(
                    "change the value, or leave this combination out with an [[exclude]] (`audiolat {} --help` lists the flags)",
                    self.probe
                ),
            ),
            CellRefusal::CannotRun(msg) => ctx.err(
                locate(&msg),
                format!("cell {key} cannot run: {msg}"),
                "change the value, or leave this combination out with an [[exclude]]",
            ),
        })?;
        Ok((
            Cell {
                key,
                axes,
                command,
                profile,
                repeat,
                at,
            },
            checked,
        ))
    }
}
