"use strict";
// A new source's form shows the S3 store only for an S3 bucket and the page
// budget only for a website, as the kind is picked. Without this script every
// field shows and the server ignores the ones that do not apply.
{
    const onlyFor = { store: "s3", max_pages: "web" };

    function showFieldsOf(kind) {
        for (const [name, wanted] of Object.entries(onlyFor)) {
            const row = document.querySelector(`.form-row.field-${name}`);
            if (row) {
                row.hidden = kind !== wanted;
            }
        }
    }

    document.addEventListener("DOMContentLoaded", () => {
        const kind = document.getElementById("id_kind");
        if (!kind) {
            return;
        }
        showFieldsOf(kind.value);
        kind.addEventListener("change", () => showFieldsOf(kind.value));
    });
}
