// The types of other modules that LanguageModels' API shows, so that `import LanguageModels` is
// all a user needs.
@_exported import enum ModelAssets.AssetInstallationError
