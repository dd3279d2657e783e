"""The Template dock: templates ranked for the selected node, their parameters as a form,
the source in a code editor, stub generation, and apply to the op kind or to one node."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from fixport.core.exporters.profiles import TORCHSCRIPT, ExporterProfile
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_offers import FixOffer
from fixport.core.session.targets import TemplateTarget
from fixport.gui.code_editor import CodeEditor
from fixport.gui.fix_offer_items import FIX_OFFER_ROLE, fix_offer_item, fix_offer_text
from fixport.gui.graph_style import WARN_COLOUR
from fixport.symbolics.library import (
    STUB_TEMPLATE_ID,
    RankedTemplate,
    TemplateInfo,
    TemplateLibrary,
    params_for,
)

OFFER_ROLE = Qt.ItemDataRole.UserRole
RAISE_OPSET_ROLE = Qt.ItemDataRole.UserRole + 1
RAISE_OPSET_OFFER_ID = "raise_opset"  # the offer id of "raise the opset to N" in offer_ids()
SPIN_LIMIT = 1_000_000


class TemplateDock(QDockWidget):
    apply_requested = Signal(object)  # FixMapping
    remove_requested = Signal(object)  # FixMapping (the one to remove)
    stub_requested = Signal(object)  # TemplateTarget
    opset_requested = Signal(int)  # "raise the opset to N" was applied
    setting_requested = Signal(str)  # a capture setting offered for the problem was applied

    def __init__(self, library: TemplateLibrary, parent: QWidget | None = None) -> None:
        super().__init__("Template", parent)
        self.setObjectName("TemplateDock")
        self.library = library
        self._libraries = {TORCHSCRIPT.name: library}  # by exporter; the others' made when first needed
        self.target: TemplateTarget | None = None
        self.current: TemplateInfo | None = None
        self.current_mapping: FixMapping | None = None
        self.current_fix: FixOffer | None = None  # the new kind of fix shown (code change, rewrite, setting)
        self._param_widgets: dict[str, QWidget] = {}
        self._build()
        self.set_target(None)

    def _build(self) -> None:
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        self.heading = QLabel()
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.heading)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.offers = QListWidget()
        self.offers.setWordWrap(True)
        self.offers.currentItemChanged.connect(self._on_offer_changed)
        self.offers.itemClicked.connect(self._on_offer_clicked)
        self._user_picked = False  # the user chose an offer since set_target: generated ones must not move it
        splitter.addWidget(self.offers)
        editor_box = QWidget()
        editor_layout = QVBoxLayout(editor_box)
        editor_layout.setContentsMargins(0, 0, 0, 0)
        self.description = QLabel()
        self.description.setWordWrap(True)
        editor_layout.addWidget(self.description)
        self.form = QFormLayout()
        editor_layout.addLayout(self.form)
        self.editor = CodeEditor()
        editor_layout.addWidget(self.editor, 1)
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setWordWrap(True)
        editor_layout.addWidget(self.error_label)
        splitter.addWidget(editor_box)
        splitter.setSizes([140, 400])
        layout.addWidget(splitter, 1)
        buttons = QGridLayout()  # two rows: the dock stays narrow enough for a 1600-pixel screen
        self.stub_button = QPushButton("Generate stub from schema")
        self.stub_button.clicked.connect(self._on_stub_clicked)
        self.apply_kind_button = QPushButton("Apply to op kind")
        self.apply_kind_button.setDefault(True)
        self.apply_kind_button.clicked.connect(lambda: self._emit_apply(instance_only=False))
        self.apply_node_button = QPushButton("Apply to this node only")
        self.apply_node_button.clicked.connect(lambda: self._emit_apply(instance_only=True))
        self.remove_button = QPushButton("Remove fix")
        self.remove_button.clicked.connect(self._on_remove_clicked)
        for index, button in enumerate((self.apply_kind_button, self.apply_node_button, self.stub_button,
                                        self.remove_button)):
            buttons.addWidget(button, index // 2, index % 2)
        layout.addLayout(buttons)
        self.setWidget(body)

    # ---- public API ----
    def set_target(self, target: TemplateTarget | None, mapping: FixMapping | None = None) -> None:
        """Offer templates for ``target``; ``mapping`` is the fix already applied to it, if any."""
        self.target, self.current_mapping, self.current_fix = target, mapping, None
        self._user_picked = False
        self.editor.setReadOnly(False)
        self.offers.blockSignals(True)
        self.offers.clear()
        self.offers.blockSignals(False)
        enabled = target is not None
        for widget in (self.stub_button, self.apply_kind_button, self.apply_node_button, self.editor):
            widget.setEnabled(enabled)
        self.remove_button.setEnabled(mapping is not None)
        self.error_label.clear()
        if target is None:
            self.heading.setText("<i>Select a node to see the templates that can fix it.</i>")
            self._show_template(None)
            return
        label = f"{target.kind}[{target.python_op_name}]" if target.python_op_name else target.kind
        state = f" — fixed by <b>{mapping.template_id}</b>" if mapping else ""
        note = f"<br><span style='color:{WARN_COLOUR}'>{target.not_for_templates}</span>" \
            if target.not_for_templates else ""
        self.heading.setText(f"<b>{label}</b> at opset {target.opset}{state}{note}")
        self.apply_kind_button.setText(f"Apply to all {label}")
        self.library = self._library_for(target.exporter)
        if target.fixes_only:  # no node, no op: only the fixes the worker offers for the problem
            self.heading.setText(f"<b>{label}</b>{note}<br><i>Looking for fixes of its kind…</i>")
            for widget in (self.stub_button, self.apply_kind_button, self.apply_node_button):
                widget.setEnabled(False)
            self._show_template(None)
            return
        offers = self.library.templates_for(target.kind, target.opset, target.python_op_name)
        raise_row = target.suggested_opset is not None and mapping is None
        if raise_row:  # the exporter's own advice comes first: one click, no template
            self.offers.addItem(self._raise_opset_item(target.opset, target.suggested_opset))
        for offer in offers:
            self.offers.addItem(self._offer_item(offer))
        selected = next((i for i, o in enumerate(offers) if mapping and o.template_id == mapping.template_id), 0)
        selected += 1 if raise_row and mapping is not None else 0
        self.offers.setCurrentRow(selected)
        if mapping is not None:
            self.editor.set_source(mapping.source)
            self._set_param_values(mapping.params)

    def _library_for(self, exporter: ExporterProfile) -> TemplateLibrary:
        """The exporter's template library (each read once)."""
        if exporter.name not in self._libraries:
            self._libraries[exporter.name] = exporter.template_library()
        return self._libraries[exporter.name]

    def _on_offer_clicked(self, _item: QListWidgetItem) -> None:
        self._user_picked = True

    def add_synthesized(self, kind: str, offers: list[RankedTemplate]) -> None:
        """Put fixes generated for ``kind`` (by the worker) first, after "raise the opset". The
        best generated fix becomes the selection unless the user already picked or applied one."""
        if self.target is None or self.target.kind != kind:
            return
        known = set(self.offer_ids())
        new = [offer for offer in offers if offer.template_id not in known]
        if not new:
            return
        first = self._leading_rows()
        untouched = not self._user_picked and self.current_mapping is None and self.offers.currentRow() == 0
        chosen = self.offers.currentItem()
        general = [offer for offer in new if not offer.template.shape_specialised]
        for row, offer in enumerate(general, start=first):
            self.offers.insertItem(row, self._offer_item(offer))
        # Fixes built for the traced sizes come after every fix made for the op that keeps shapes open.
        row = next((i for i in range(first + len(general), self.offers.count()) if self._after_open_fixes(i)),
                   self.offers.count())
        for offset, offer in enumerate(offer for offer in new if offer.template.shape_specialised):
            self.offers.insertItem(row + offset, self._offer_item(offer))
        self.offers.setCurrentRow(first if untouched and not first else self.offers.row(chosen))

    def add_fix_offers(self, instance: str, offers: list[FixOffer]) -> None:
        """List the new kinds of fix for the problem at ``instance`` first, after "raise the opset";
        the first becomes the selection unless the user already picked or applied a fix."""
        target = self.target
        if target is None or target.instance != instance:
            return
        chosen = self.offers.currentItem()
        if chosen is not None and chosen.data(FIX_OFFER_ROLE) is not None:
            chosen = None  # an older list of these fixes: replaced below
        for row in reversed(range(self.offers.count())):
            if self.offers.item(row).data(FIX_OFFER_ROLE) is not None:
                self.offers.takeItem(row)
        if target.fixes_only:
            label = target.kind
            found = f"{len(offers)} fix(es) of its kind" if offers else "no fix of its kind: the Inspector says why"
            self.heading.setText(f"<b>{label}</b><br>{found}")
        first = self._leading_rows()
        untouched = not self._user_picked and self.current_mapping is None
        for row, offer in enumerate(offers, start=first):
            self.offers.insertItem(row, fix_offer_item(offer))
        if offers and (untouched or chosen is None):
            self.offers.setCurrentRow(first)
        elif chosen is not None:
            self.offers.setCurrentItem(chosen)

    def _leading_rows(self) -> int:
        """How many rows come before the op templates: "raise the opset", then the new kinds of fix."""
        rows = 0
        while rows < self.offers.count() and (self.offers.item(rows).data(RAISE_OPSET_ROLE)
                                             or self.offers.item(rows).data(FIX_OFFER_ROLE) is not None):
            rows += 1
        return rows

    def fix_offer_ids(self) -> list[str]:
        """The ids of the new kinds of fix listed (a fix's template id, or 'setting.NAME')."""
        items = (self.offers.item(i).data(FIX_OFFER_ROLE) for i in range(self.offers.count()))
        return [offer.offer_id for offer in items if offer is not None]

    def _after_open_fixes(self, row: int) -> bool:
        """Whether the offer at ``row`` is generic, the stub, or shape-specialised itself."""
        item = self.offers.item(row)
        if item.data(FIX_OFFER_ROLE) is not None:
            return False
        offer = item.data(OFFER_ROLE)
        template = offer.template if offer is not None else None
        return template is None or "*" in template.fits or template.shape_specialised

    def offer_ids(self) -> list[str]:
        return [self._offer_id(self.offers.item(i)) for i in range(self.offers.count())]

    @staticmethod
    def _offer_id(item: QListWidgetItem) -> str:
        fix = item.data(FIX_OFFER_ROLE)
        if fix is not None:
            return fix.offer_id
        offer = item.data(OFFER_ROLE)
        return offer.template_id if offer is not None else RAISE_OPSET_OFFER_ID

    def select_offer(self, template_id: str) -> None:
        self._user_picked = True
        ids = self.offer_ids()
        self.offers.setCurrentRow(ids.index(template_id))

    def show_stub(self, source: str) -> None:
        self.current = None
        self._build_form({})
        calls = (self.target.exporter if self.target else TORCHSCRIPT).stub_calls
        self.description.setText(f"A starting point generated from the op's schema: replace the TODO with {calls}.")
        self.editor.set_source(source)

    def show_error(self, message: str, line: int | None = None) -> None:
        self.error_label.setText(f"line {line}: {message}" if line else message)
        self.editor.mark_error(line, message)

    def clear_error(self) -> None:
        self.error_label.clear()
        self.editor.clear_error()

    # ---- internals ----
    def _offer_item(self, offer: RankedTemplate) -> QListWidgetItem:
        title = offer.template.title if offer.template else "Stub from the op's schema"
        pinned = self._pinned_dims(offer.template)
        item = QListWidgetItem(f"{title}\n    {offer.why}" + (f"\n    {pinned}" if pinned else ""))
        item.setData(OFFER_ROLE, offer)
        item.setToolTip(offer.template.description if offer.template else offer.why)
        return item

    def _pinned_dims(self, template: TemplateInfo | None) -> str:
        """For a template built for the traced sizes, the declared dynamic dims it pins ('' otherwise)."""
        specialised = template is not None and template.shape_specialised
        return self.target.pinned_dims if specialised and self.target is not None else ""

    @staticmethod
    def _raise_opset_item(opset: int, suggested: int) -> QListWidgetItem:
        item = QListWidgetItem(f"Raise the opset to {suggested}\n    the exporter names opset {suggested} for "
                               f"this node (now {opset}); one click sets the project's opset and exports again")
        item.setData(RAISE_OPSET_ROLE, suggested)
        item.setToolTip(f"Set the project's opset to {suggested} and re-export.")
        return item

    def raising_opset(self) -> int | None:
        """The opset the current offer raises to, when it is "raise the opset to N"."""
        item = self.offers.currentItem()
        return item.data(RAISE_OPSET_ROLE) if item is not None else None

    def _on_offer_changed(self, item: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        offer: RankedTemplate | None = item.data(OFFER_ROLE) if item else None
        self.clear_error()
        raise_to = item.data(RAISE_OPSET_ROLE) if item else None
        self.current_fix = item.data(FIX_OFFER_ROLE) if item else None
        self.editor.setReadOnly(self.current_fix is not None)  # it shows what the fix changes, not a template
        target = self.target
        label = (f"{target.kind}[{target.python_op_name}]" if target.python_op_name else target.kind) if target else ""
        self.apply_kind_button.setText(f"Raise opset to {raise_to}" if raise_to else f"Apply to all {label}")
        self.apply_node_button.setEnabled(self.target is not None and not raise_to and self.current_fix is None)
        self.stub_button.setEnabled(self.target is not None and not self.target.fixes_only)
        if self.current_fix is not None:
            self._show_fix_offer(self.current_fix)
        elif raise_to:
            self._show_template(None)
            self.description.setText(f"torch's exporter handles this node at opset {raise_to}: no template "
                                     "needed. Apply sets the project's opset and exports again.")
        elif offer is None:
            self._show_template(None)
        elif offer.template_id == STUB_TEMPLATE_ID or offer.template is None:
            self._on_stub_clicked()
        else:
            self._show_template(offer.template, offer.extra_params)

    def _show_fix_offer(self, offer: FixOffer) -> None:
        """A new kind of fix: what it does, and what it changes (the diff, the node, the setting)."""
        self._show_template(None)
        self.apply_kind_button.setText("Apply this fix")
        self.apply_kind_button.setEnabled(True)
        self.description.setText(fix_offer_text(offer))
        self.editor.set_source(offer.change)

    def _show_template(self, template: TemplateInfo | None, extra_params: dict[str, Any] | None = None) -> None:
        self.current = template
        if template is None:
            self.description.clear()
            self.editor.set_source("")
            self._build_form({})
            return
        runtime = ("runs in ONNX Runtime" if template.runs_in_onnxruntime
                   else "needs a custom runtime (not ONNX Runtime)")
        pinned = self._pinned_dims(template)
        self.description.setText(f"{template.description} — opset {template.min_opset}+, {runtime}."
                                 + (f"\n{pinned}" if pinned else ""))
        self._build_form(template.params)
        kind = self.target.kind if self.target is not None else ""
        self._set_param_values({**params_for(kind, template.default_params()), **(extra_params or {})})
        self.editor.set_source(template.source)
        self.editor.show_line(template.symbolic_line)  # the function, not the metadata, is what matters

    def _build_form(self, params: dict[str, dict[str, Any]]) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self._param_widgets = {}
        for name, spec in params.items():
            widget = self._param_widget(spec)
            self._param_widgets[name] = widget
            self.form.addRow(spec.get("label", name), widget)

    @staticmethod
    def _param_widget(spec: dict[str, Any]) -> QWidget:
        kind = spec.get("type", "str")
        if kind == "bool":
            return QCheckBox()
        if kind == "int":
            box = QSpinBox()
            box.setRange(-SPIN_LIMIT, SPIN_LIMIT)
            return box
        if kind == "float":
            box = QDoubleSpinBox()
            box.setRange(-SPIN_LIMIT, SPIN_LIMIT)
            box.setDecimals(6)
            return box
        if kind == "choice":
            combo = QComboBox()
            combo.addItems([str(c) for c in spec.get("choices", [])])
            return combo
        return QLineEdit()

    def _set_param_values(self, values: dict[str, Any]) -> None:
        for name, value in values.items():
            widget = self._param_widgets.get(name)
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(value))
            elif isinstance(widget, (QSpinBox, QDoubleSpinBox)) and value is not None:
                widget.setValue(value)
            elif isinstance(widget, QComboBox):
                widget.setCurrentText(str(value))
            elif isinstance(widget, QLineEdit):
                widget.setText("" if value is None else str(value) if not isinstance(value, (list, dict))
                               else repr(value))

    def param_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, widget in self._param_widgets.items():
            if isinstance(widget, QCheckBox):
                values[name] = widget.isChecked()
            elif isinstance(widget, (QSpinBox, QDoubleSpinBox)):
                values[name] = widget.value()
            elif isinstance(widget, QComboBox):
                values[name] = widget.currentText()
            elif isinstance(widget, QLineEdit):
                values[name] = _parse_text_param(widget.text())
        return values

    def mapping_for(self, instance_only: bool) -> FixMapping | None:
        """The fix the dock currently describes (what Apply would apply)."""
        if self.target is None:
            return None
        template = self.current
        source = self.editor.source()
        template_id = template.id if template else STUB_TEMPLATE_ID
        return FixMapping(
            target_kind=self.target.kind, template_id=template_id, source=source,
            params=self.param_values(), instance=self.target.instance if instance_only else None,
            python_op_name=self.target.python_op_name,
            custom_opsets=dict(template.custom_opsets) if template else {},
            edited=template is None or source != template.source)

    def _emit_apply(self, instance_only: bool) -> None:
        raise_to = self.raising_opset()
        if raise_to is not None:
            self.opset_requested.emit(raise_to)
            return
        fix = self.current_fix
        if fix is not None:
            self.clear_error()
            if fix.setting:
                self.setting_requested.emit(fix.setting)
            elif fix.mapping is not None:
                self.apply_requested.emit(fix.mapping)
            return
        mapping = self.mapping_for(instance_only)
        if mapping is not None:
            self.clear_error()
            self.apply_requested.emit(mapping)

    def _on_stub_clicked(self) -> None:
        if self.target is not None:
            self.stub_requested.emit(self.target)

    def _on_remove_clicked(self) -> None:
        if self.current_mapping is not None:
            self.remove_requested.emit(self.current_mapping)


def _parse_text_param(text: str) -> Any:
    """Lists and numbers typed into a text field keep their type; anything else is a string."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, (list, tuple, dict, int, float)) else text
