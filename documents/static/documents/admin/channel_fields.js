"use strict";
// The channel form's "newest first by" selects and "filters offered" checkboxes
// offer the metadata fields in the rows below, as they are being edited: a field
// added, renamed, marked filterable or deleted shows at once. A choice that no
// longer names such a field stays, marked, so saving says what to fix.
{
    const rowsSelector = "#metadata_fields-group tr.form-row:not(.empty-form)";

    function editedFields() {
        const fields = [];
        for (const row of document.querySelectorAll(rowsSelector)) {
            const name = row.querySelector('input[name$="-name"]');
            const deleted = row.querySelector('input[name$="-DELETE"]');
            if (!name || !name.value.trim() || (deleted && deleted.checked)) {
                continue;
            }
            const filterable = row.querySelector('input[name$="-filterable"]');
            fields.push({
                name: name.value.trim(),
                filterable: Boolean(filterable && filterable.checked),
            });
        }
        return fields;
    }

    function syncSortSelects(names) {
        const selects = document.querySelectorAll(
            'select[data-quire-field-choice="any"]'
        );
        for (const select of selects) {
            const current = select.value;
            const options = [new Option("—", "")];
            for (const name of names) {
                options.push(new Option(name, name));
            }
            if (current && !names.includes(current)) {
                options.push(new Option(`${current} (not a field)`, current));
            }
            select.replaceChildren(...options);
            select.value = current;
        }
    }

    function syncFilterChoices(names) {
        for (const box of document.querySelectorAll(
            'div[data-quire-field-choice="filterable"]'
        )) {
            const checked = new Set(
                [...box.querySelectorAll("input:checked")].map((input) => input.value)
            );
            const shown = [...names, ...[...checked].filter((n) => !names.includes(n))];
            const labels = shown.map((name) => {
                const label = document.createElement("label");
                label.className = "quire-field-choice";
                const input = document.createElement("input");
                input.type = "checkbox";
                input.name = box.dataset.name;
                input.value = name;
                input.checked = checked.has(name);
                const text = names.includes(name) ? name : `${name} (not filterable)`;
                label.append(input, ` ${text}`);
                return label;
            });
            const empty = box.querySelector(".quire-field-choices-empty");
            box.replaceChildren(...labels, empty);
        }
    }

    function refresh() {
        if (!document.querySelector("#metadata_fields-group")) {
            return;
        }
        const fields = editedFields();
        syncSortSelects(fields.map((field) => field.name));
        syncFilterChoices(
            fields.filter((field) => field.filterable).map((field) => field.name)
        );
    }

    function onEdit(event) {
        if (event.target.closest && event.target.closest("#metadata_fields-group")) {
            refresh();
        }
    }

    document.addEventListener("input", onEdit);
    document.addEventListener("change", onEdit);
    document.addEventListener("formset:added", refresh);
    document.addEventListener("formset:removed", refresh);
    if (document.readyState === "loading") {
        document.addEventListener("DOMContentLoaded", refresh);
    } else {
        refresh();
    }
}
